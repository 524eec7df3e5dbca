/* A '#pragma scop' whose block ends before any '#pragma endscop', and a stray
   '#pragma endscop' in another function. */
void f(int n, double A[n]) {
  // expected-error@+1:1 {{'#pragma scop' has no matching '#pragma endscop' in the same block}}
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 0.0;
}

void g(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 0.0;
  // expected-error@+1:1 {{'#pragma endscop' without a matching '#pragma scop'}}
#pragma endscop
}
