/* pairs.c: the preload library's pairing-table code, built into this test package (see
 * pairs_unsafe.go). */
#include "../../shim/preload/pairs.c"
