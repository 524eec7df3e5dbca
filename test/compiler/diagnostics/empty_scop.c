/* A scop without statements (declarations and empty statements only). */
void f(int n, double A[n]) {
  // expected-error@+1:1 {{scop contains no statements}}
#pragma scop
  ;
  {
    double unused;
  }
#pragma endscop
}
