/* Non-affine loop bounds: a quadratic bound, a bound on a scalar written in the scop,
   a bound on a floating-point variable, a bound calling a function. */
int g(int);
void f(int n, double A[n], double x) {
  int i, j, k;
  k = 3;
#pragma scop
  // expected-error@+1:19 {{loop bound 'i < n * n' is not affine: 'n * n' multiplies two variables}}
  for (i = 0; i < n * n; i++)
    A[0] = 1.0;
  for (i = 0; i < n; i++) {
    // expected-error@+1:21 {{'k' is assigned inside the scop, so it is not a parameter}}
    for (j = 0; j < k; j++)
      A[j] = 0.0;
    k = i;
  }
  // expected-error@+1:19 {{'x' has floating type 'double'}}
  for (i = 0; i < x; i++)
    A[i] = 2.0;
  // expected-error@+1:19 {{'g(n)' calls a function}}
  for (i = 0; i < g(n); i++)
    A[i] = 2.0;
#pragma endscop
}
