/* Type names bbmmc has not seen declared (a missing header or typedef). They are reported
   at the type where a scop needs the declaration: an array parameter, a global array,
   a local array, declarations inside the scop. Outside scops unknown types are skimmed
   over (unused_t below is never an error). */
// expected-error@+1:1 {{unknown type name 'glob_t'}}
glob_t G[100];
// expected-error@+1:15 {{unknown type name 'foo_t'}}
void f(int n, foo_t A[n]) {
  unused_t nothing_in_the_scop;
  // expected-error@+1:9 {{unknown type name 'elem_t'}}
  const elem_t L[10];
#pragma scop
  for (int i = 0; i < n; i++) {
    A[i] = 0;
    G[i] = L[i] + A[i];
    // expected-error@+1:5 {{unknown type name 'my_t'}}
    my_t t = A[i];
  }
  // expected-error@+1:8 {{unknown type name 'index_t'}}
  for (index_t j = 0; j < n; j++)
    G[j] = 1;
#pragma endscop
}
