/* Errors inside macro-expanded code point at the user's line, at the macro use;
   line markers of an included header do not shift the lines of this file. */
#include <stddef.h>
#define N 100
#define IDX(i, j) ((i) * (j))
#define DATA_TYPE double
void f(DATA_TYPE A[N][N]) {
#pragma scop
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      // expected-error@+1:12 {{subscript of 'A' '((i) * (j))' is not affine: '((i) * (j))' multiplies two variables}}
      A[i][IDX(i, j)] = 0.0;
#pragma endscop
}
