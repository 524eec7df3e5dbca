/* Codegen: a loop whose value the loops already mapped to the grid determine. The inner
   loop j runs one iteration, j = i: mapping x to i (A's contiguous subscript) and y to j
   would be legal but make a square of threads of which only the diagonal has work, so j
   runs inside the thread (CUDA: "Thread mapping: x: i."). A tiled wavefront's block row of
   one row (bbmmc --wavefront-tiles=1,W: r = i) is the case that needs it. */
void kernel_determined(int N, double A[N][N], double B[N]) {
  int i, j;
#pragma scop
  for (i = 0; i < N; i++)
    for (j = i; j < i + 1; j++)
      A[j][i] = 2.0 * B[i];
#pragma endscop
}
