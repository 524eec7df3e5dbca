/* Non-affine subscripts: products of iterators, parameter times iterator
   (a linearised access), data-dependent (indirect) subscripts, division by a
   variable, a function call. Several errors are reported in one run. */
int g(int);
void f(int n, double A[n][n], double B[n], int idx[n]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      // expected-error@+1:12 {{subscript of 'A' 'i * j' is not affine: 'i * j' multiplies two variables}}
      A[i][i * j] = 0.0;
      // expected-error@+1:9 {{subscript of 'B' 'i * n + j' is not affine: 'i * n' multiplies two variables}}
      B[i * n + j] = 1.0;
      // expected-error@+1:9 {{subscript of 'B' 'idx[i]' is not affine: 'idx[i]' reads an array}}
      B[idx[i]] = 2.0;
      // expected-error@+1:9 {{'i / j' divides by a non-constant}}
      B[i / j] = 3.0;
      // expected-error@+1:9 {{subscript of 'B' 'g(i)' is not affine: 'g(i)' calls a function}}
      B[g(i)] = 4.0;
    }
#pragma endscop
}
