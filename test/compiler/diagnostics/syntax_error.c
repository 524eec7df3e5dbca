/* A syntax error inside a scop is the only error: the statement it drops must not be
   followed by "scop contains no statements" (nor by errors about what it left out). */
void f(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    // expected-error@+1:19 {{expected an expression, found ';'}}
    A[i] = A[i] + ;
#pragma endscop
}

void g(int n, double A[n]) {
#pragma scop
  // expected-error@+1:28 {{expected an expression, found ')'}}
  for (int i = 0; i < n; i+)
    A[i] = 0.0;
#pragma endscop
}
