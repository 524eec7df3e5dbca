/* A program whose file defines main after its scop: bbmmc makes main's first statement
   start the devices' initialisation in the background (bbmm_gen_warm_up). */
void scale(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = 2.0 * A[i];
#pragma endscop
}

int main(void) {
  double A[16];
  for (int i = 0; i < 16; i++) A[i] = i;
  scale(16, A);
  return A[3] == 6.0 ? 0 : 1;
}
