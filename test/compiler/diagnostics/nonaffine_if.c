/* Non-affine if conditions: data-dependent tests belong in the right-hand side. */
void f(int n, double A[n], double B[n]) {
#pragma scop
  for (int i = 0; i < n; i++) {
    // expected-error@+1:9 {{if condition 'A[i] > 0' is not affine: 'A[i]' reads an array}}
    if (A[i] > 0)
      B[i] = A[i];
    // expected-error@+1:9 {{if condition 'i * i < n' is not affine: 'i * i' multiplies two variables}}
    if (i * i < n)
      B[i] = 0.0;
  }
#pragma endscop
}
