// The exact-search kernel compiled for one instruction set; see exact_scan_kernel.inc.
#define SLUICE_SCAN_FN scan_panels_avx512
#include "nodes/retrieval/dense/exact_scan_kernel.inc"
