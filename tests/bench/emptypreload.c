/*
 * emptypreload: a preload library with no code that runs, for the start-up part's floor. Loading
 * any library with LD_PRELOAD costs every process the loader's work for one more object (open,
 * map, one more scope in every symbol look-up); this measures that cost, so the report can say
 * which part of what goxio adds is the preload mechanism itself and which is goxio's.
 */
int emptypreload_unused(void);
int emptypreload_unused(void) { return 0; }
