# --- Host backend and trace writer (label "runtime") -------------------------
# host_backend_test: allocation/capacity, rectangular copies against a byte-wise
# oracle (element widths 1..16, 2-D/3-D, every pitch combination, peer and
# host-staged), event ordering across devices, error propagation, threads.
# trace_test: the Chrome trace JSON (read back by a strict parser) and the
# slices the host backend records.
bbmm_add_test(host_backend_test LABELS runtime
  SOURCES host_backend_test.cpp
  LIBS bbmm_runtime_internal)
bbmm_add_test(trace_test LABELS runtime
  SOURCES trace_test.cpp
  LIBS bbmm_runtime_internal)
# --- end of host backend ----------------------------------------------------------
