/* Preloaded by scripts/sanitize.sh into every process of the sanitizer tests: dlclose does nothing, so a
 * plugin that Open MPI, PMIx or hwloc loaded stays mapped until exit. LeakSanitizer then names the module of
 * each frame of a leak's allocation stack, and lsan.supp can match it, with the fast frame-pointer unwinder
 * (ten times less CPU than the slow one on the sampler's allocations). */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
