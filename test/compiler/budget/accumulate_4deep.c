/* Compile-time budget: a 4-deep nest over four parameters accumulating into one element.
   Every loop is serial and the phase has no parallel loop, so all four iterators are
   serial iterators of the boxes; choosing sample serial iterations by enumerating all
   32^4 of them took 1.7-4.6 s. */
void accumulate_4deep(int n0, int n1, int n2, int n3, double A[1]) {
#pragma scop
  for (int i = 0; i < n0; i++)
    for (int j = 0; j < n1; j++)
      for (int k = 0; k < n2; k++)
        for (int l = 0; l < n3; l++)
          A[0] = A[0] + 1;
#pragma endscop
}
