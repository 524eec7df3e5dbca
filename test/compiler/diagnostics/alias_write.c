/* Writes (and reads) through a local pointer that aliases another array. */
void f(int n, double A[n][n], double B[n]) {
  double *row = A[0];
  double *alias = B;
#pragma scop
  for (int i = 0; i < n; i++) {
    // expected-error@+1:5 {{write through pointer 'row', which may alias another array}}
    row[i] = 1.0;
    // expected-error@+1:12 {{read through pointer 'alias', which may alias another array}}
    B[i] = alias[i];
  }
#pragma endscop
}
