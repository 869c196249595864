# CUDA is optional. AUTO enables it when nvcc is found (CUDA 13 lives in /usr/local/cuda);
# the default build and CI pass without a GPU: every CUDA kernel has a CPU twin.
# AUTO also needs a GPU on the build machine (/dev/nvidiactl): nvcc alone is preinstalled on
# machines without one, where compiling kernels that cannot run would only slow the build.
set(SLUICE_HAVE_CUDA OFF)
set(_sluice_want_cuda OFF)
if(SLUICE_CUDA STREQUAL "ON" OR (SLUICE_CUDA STREQUAL "AUTO" AND EXISTS /dev/nvidiactl))
  set(_sluice_want_cuda ON)
endif()
if(_sluice_want_cuda)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # sm_90 (Hopper) machine code plus portable PTX for anything newer.
    set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    set(SLUICE_HAVE_CUDA ON)
  elseif(SLUICE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SLUICE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "Sluice CUDA kernels: ${SLUICE_HAVE_CUDA}")
