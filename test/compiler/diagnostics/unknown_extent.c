/* Arrays whose extents bbmmc cannot know: pointer parameters, an unsized first
   dimension, a pointer to rows, an undeclared array, a non-affine extent. */
void f(int n, double *P, double Q[][100], double (*R)[100],
       // expected-error@+1:17 {{extent of array 'S' 'n * n' is not affine: 'n * n' multiplies two variables}}
       double S[n * n]) {
#pragma scop
  for (int i = 0; i < n; i++) {
    // expected-error@+1:5 {{unknown array extent: 'P' is declared as a pointer}}
    P[i] = 0.0;
    // expected-error@+1:5 {{unknown array extent: dimension 1 of 'Q' has no size}}
    Q[i][0] = 0.0;
    // expected-error@+1:5 {{unknown array extent: dimension 1 of 'R' has no size}}
    R[i][0] = 0.0;
    // expected-error@+1:5 {{unknown array extent: 'U' is not declared}}
    U[i] = 1.0;
    S[i] = 1.0;
  }
#pragma endscop
}
