/* Unstructured control flow: goto, labels, break, continue, return, switch. */
void f(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++) {
    // expected-error@+1:5 {{'goto' is not supported inside a scop}}
    goto out;
    // expected-error@+1:3 {{labels are not supported inside a scop}}
  out:
    A[i] = 0.0;
    // expected-error@+1:5 {{'break' is not supported inside a scop}}
    break;
    // expected-error@+1:5 {{'continue' is not supported inside a scop}}
    continue;
    // expected-error@+1:5 {{'return' is not supported inside a scop}}
    return;
    // expected-error@+1:5 {{'switch' is not supported inside a scop}}
    switch (i) { default: A[i] = 1.0; }
  }
#pragma endscop
}
