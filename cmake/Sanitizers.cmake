# SLUICE_SANITIZE=address builds everything with ASan+UBSan, =thread with TSan.
#
# Sanitizer builds also turn `__attribute__((target_clones(...)))` into a plain function:
# the clones' ifunc resolvers run during dynamic relocation, before the sanitizer runtime is
# initialised, and crash instrumented binaries at start-up. The kernels keep their portable
# code path, which is what the sanitizers should check anyway.
if(SLUICE_SANITIZE STREQUAL "address")
  # -fno-sanitize=vptr: oneTBB's headers make virtual calls on flow-graph nodes whose dynamic
  # type UBSan cannot see from the uninstrumented libtbb, a false report that aborts any test
  # running a real graph.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(SLUICE_SANITIZE STREQUAL "thread")
  # -g1 (line tables): tests/tsan.supp names oneTBB's headers by file (race_top:oneapi/tbb/),
  # which only matches frames that carry their file; without it every oneTBB-internal race of
  # the flow graph is reported.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=thread)
elseif(NOT SLUICE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SLUICE_SANITIZE must be '', 'address' or 'thread', not '${SLUICE_SANITIZE}'")
endif()
if(NOT SLUICE_SANITIZE STREQUAL "")
  add_compile_options("-Dtarget_clones(...)=")
  add_compile_definitions(SLUICE_SANITIZER_BUILD=1)
endif()
