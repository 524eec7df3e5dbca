/* Pointer arithmetic and dereferences inside a scop. */
void f(int n, double A[n], double B[n]) {
#pragma scop
  for (int i = 0; i < n - 1; i++) {
    // expected-error@+1:5 {{write through a pointer dereference '*(A + i)'}}
    *(A + i) = 1.0;
    // expected-error@+1:12 {{pointer dereference '*(B + i)' is not supported inside a scop}}
    A[i] = *(B + i);
    // expected-error@+1:14 {{pointer arithmetic on 'B' is not supported}}
    A[i] = g(B + 1);
    // expected-error@+1:12 {{address-of '&B[i]' is not supported inside a scop}}
    A[i] = &B[i] != 0;
  }
#pragma endscop
}
