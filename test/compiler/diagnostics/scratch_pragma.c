// '#pragma bbmm scratch(...)': arrays whose values after the scop are not used.
void scratch_unknown(int n, double A[n], double B[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    B[i] = A[i] + 1.0;
  // expected-error@+1:1 {{'#pragma bbmm scratch' names 'C', which the scop does not access}}
#pragma bbmm scratch(B, C)
#pragma endscop
}

void scratch_malformed(int n, double A[n], double B[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    B[i] = A[i] + 1.0;
  // expected-error@+1:1 {{malformed '#pragma bbmm scratch': expected a parenthesised list}}
#pragma bbmm scratch B
  // expected-error@+1:1 {{malformed '#pragma bbmm scratch': the list of array names is empty}}
#pragma bbmm scratch()
  // expected-error@+1:1 {{malformed '#pragma bbmm scratch': '2x' is not a name}}
#pragma bbmm scratch(B, 2x)
  for (int i = 0; i < n; i++) {
    // expected-error@+1:1 {{'#pragma bbmm scratch' inside a statement}}
#pragma bbmm scratch(B)
    A[i] = B[i];
  }
#pragma endscop
}
