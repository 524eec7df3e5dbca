/* PolyBench-style macro input: DATA_TYPE, SCALAR_VAL, _PB_N-like bound macros and
   POLYBENCH_2D array parameters expand before parsing; diagnostics and locations
   still refer to this file. The scalar 'tmp' is privatised for the i loop. */
#define N 4000
#define DATA_TYPE double
#define SCALAR_VAL(x) x
#define _PB_N n
#define POLYBENCH_2D(var, dim1, dim2, ddim1, ddim2) var[dim1 + 0][dim2 + 0]
#define POLYBENCH_1D(var, dim1, ddim1) var[dim1 + 0]

static void kernel_atax(int n, DATA_TYPE POLYBENCH_2D(A, N, N, n, n),
                        DATA_TYPE POLYBENCH_1D(x, N, n), DATA_TYPE POLYBENCH_1D(y, N, n)) {
  int i, j;
  DATA_TYPE tmp;
#pragma scop
  for (i = 0; i < _PB_N; i++) {
    tmp = SCALAR_VAL(0.0);
    for (j = 0; j < _PB_N; j++)
      tmp = tmp + A[i][j] * x[j];
    y[i] = tmp;
  }
#pragma endscop
}
