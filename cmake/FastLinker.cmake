# LLVM's linker (ld.lld) for every C++ executable, where it is installed (scripts/setup installs
# it) and the compiler accepts it; GNU ld otherwise. SLUICE_LLD=OFF keeps GNU ld.
#
# Why: linking is serial work at the end of each test and benchmark target. An instrumented
# test binary linked in 0.66 s with lld against 2.55 s with GNU ld, and the two trees of
# scripts/test link over 150 executables. Only the link step changes: the same objects and
# libraries, the same --no-as-needed handling of tbbmalloc_proxy (CMakeLists.txt).
option(SLUICE_LLD "Link with LLVM's ld.lld when it is installed" ON)
if(SLUICE_LLD)
  find_program(SLUICE_LD_LLD ld.lld)
  if(SLUICE_LD_LLD)
    include(CheckLinkerFlag)
    check_linker_flag(CXX -fuse-ld=lld SLUICE_CXX_ACCEPTS_LLD)
    if(SLUICE_CXX_ACCEPTS_LLD)
      # CXX link lines only: nvcc, which links nothing of ours today, does not know the flag.
      add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
    endif()
  endif()
endif()
