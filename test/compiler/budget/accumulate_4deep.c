/* Compile-time budget: a 4-deep nest over four parameters accumulating into one element.
   Every loop is serial and none is parallel. When the four loops were the phase's serial
   loops, choosing the sample serial iterations enumerated all 32^4 of them (1.7-4.6 s);
   the nest is one serial region now (no serial loops), and serial4_parallel.c keeps the
   enumeration case. */
void accumulate_4deep(int n0, int n1, int n2, int n3, double A[1]) {
#pragma scop
  for (int i = 0; i < n0; i++)
    for (int j = 0; j < n1; j++)
      for (int k = 0; k < n2; k++)
        for (int l = 0; l < n3; l++)
          A[0] = A[0] + 1;
#pragma endscop
}
