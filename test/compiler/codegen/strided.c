/* Codegen: a single-device phase (one tile on device 0).
   A strided write X[2*i]: the write set of a tile is neither boxes nor rows of
   intervals, so the phase must run as one tile on one device. */
void kernel_strided(int N, double X[2 * N], double Y[N]) {
  int i;
#pragma scop
  for (i = 0; i < N; i++)
    X[2 * i] = Y[i];
#pragma endscop
}
