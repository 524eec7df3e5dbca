/* A '#pragma scop' whose block ends before any '#pragma endscop', a stray
   '#pragma endscop' in another function, and a misspelled '#pragma endscop' (one error,
   not a second one for the missing end). */
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

void h(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 0.0;
  // expected-error@+1:1 {{'#pragma endscope' is not '#pragma endscop'}}
#pragma endscope
}
