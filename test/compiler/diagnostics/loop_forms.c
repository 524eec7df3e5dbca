/* Loop headers bbmmc cannot model: non-constant step, increment of another variable,
   a condition that is no bound, a missing condition, a condition bounding the wrong
   side, a modified iterator, a non-integer iterator. */
void f(int n, int s, double A[n]) {
  int i, j;
#pragma scop
  // expected-error@+1:22 {{loop step 'i += s' is not a constant increment of the iterator}}
  for (i = 0; i < n; i += s)
    A[i] = 0.0;
  // expected-error@+1:22 {{loop increments 'j' but its iterator is 'i'}}
  for (i = 0; i < n; j++)
    A[i] = 0.0;
  // expected-error@+1:15 {{loop condition 'i != 5' is not a bound on 'i'}}
  for (i = 0; i != 5; i++)
    A[i] = 0.0;
  // expected-error@+1:3 {{loop without a condition}}
  for (i = 0; ; i++)
    A[i] = 0.0;
  // expected-error@+1:15 {{loop condition 'i >= 0' does not bound 'i' from above, but the loop counts up}}
  for (i = 0; i >= 0; i++)
    A[i] = 0.0;
  for (i = 0; i < n; i++) {
    A[i] = 1.0;
    // expected-error@+1:5 {{loop iterator 'i' is assigned inside its loop}}
    i = i + 1;
  }
  // expected-error@+1:15 {{loop iterator 'x' must have an integer type}}
  for (double x = 0; x < n; x++)
    A[0] = x;
#pragma endscop
}
