/* Other rejected statements: a call as a statement, an assignment inside an
   expression (a chain a = b = e is accepted), a rank mismatch, an array declared in the
   scop, the comma operator, a missing semicolon, pragma misuse, struct members,
   increments in expressions. */
struct P { double x; };
void h(double);
void f(int n, double A[n][n], double B[n], struct P p) {
#pragma scop
  for (int i = 0; i < n; i++) {
    // expected-error@+1:5 {{call 'h(...)' as a statement}}
    h(B[i]);
    // expected-error@+1:21 {{assignment inside an expression is not supported}}
    B[i] = (A[i][0] = 1.0) + 1.0;
    // expected-error@+1:5 {{array 'A' has 2 dimensions but is used with 1 subscript}}
    A[i] = 0.0;
    // expected-error@+1:12 {{arrays declared inside a scop are not supported}}
    double T[10];
    // expected-error@+1:13 {{the comma operator is not supported inside a scop}}
    B[i] = 1, B[0] = 2;
    // expected-error@+1:15 {{expected ';' after the statement}}
    B[i] = 2.0
  }
  // expected-error@+1:1 {{unknown bbmm pragma '#pragma bbmm paralel'}}
#pragma bbmm paralel
  for (int i = 0; i < n; i++)
    B[i] = 0.0;
  // expected-error@+1:1 {{'#pragma bbmm parallel' must be followed by a for loop}}
#pragma bbmm parallel
  B[0] = 1.0;
  // expected-error@+1:10 {{struct members are not supported inside a scop}}
  B[0] = p.x;
  // expected-error@+1:14 {{'++' inside an expression is not supported}}
  B[0] = B[1]++;
#pragma endscop
}
