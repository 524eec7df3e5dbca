/* while and do-while loops are rejected, once each: the counter a while loop increments
   adds no error of its own; the statements after them are still checked. */
void f(int n, double A[n]) {
  int i = 0;
#pragma scop
  // expected-error@+1:3 {{'while' loops are not supported inside a scop}}
  while (i < n) {
    A[i] = 0.0;
    i++;
  }
  // expected-error@+1:3 {{'do' loops are not supported inside a scop}}
  do {
    A[0] = 1.0;
  } while (0);
  for (int j = 0; j < n; j++)
    // expected-error@+1:7 {{subscript of 'A' 'j * j' is not affine}}
    A[j * j] = 2.0;
#pragma endscop
}
