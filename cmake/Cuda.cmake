# CUDA is optional. SLUICE_CUDA=AUTO builds the CUDA targets (kernels/cuda/) when nvcc is found,
# whether or not the machine has a GPU: CI compiles them on GPU-less machines so they never rot,
# and their tests compare against the CPU twin and skip by name without a device. ON requires
# nvcc; OFF skips them, and so does AUTO in a sanitizer build (its global -fsanitize flags are
# not nvcc's). CUDA 13 lives in /usr/local/cuda when it is not on PATH.
set(SLUICE_HAVE_CUDA OFF)
if(NOT SLUICE_SANITIZE STREQUAL "" AND SLUICE_CUDA STREQUAL "ON")
  message(FATAL_ERROR "SLUICE_CUDA=ON does not combine with SLUICE_SANITIZE (nvcc takes no sanitizer flags)")
endif()
if(NOT SLUICE_SANITIZE STREQUAL "" AND SLUICE_CUDA STREQUAL "AUTO")
  message(STATUS "Sluice CUDA kernels: skipped in a sanitizer build")
elseif(SLUICE_CUDA STREQUAL "ON" OR SLUICE_CUDA STREQUAL "AUTO")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # sm_90 (Hopper) machine code plus compute_90 PTX, which the driver compiles for anything
    # newer. One architecture keeps the compile short (docs/testing.md states its time).
    set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(SLUICE_HAVE_CUDA ON)
  elseif(SLUICE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SLUICE_CUDA=ON but no CUDA compiler was found")
  endif()
elseif(NOT SLUICE_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "SLUICE_CUDA must be AUTO, ON or OFF, not '${SLUICE_CUDA}'")
endif()
message(STATUS "Sluice CUDA kernels: ${SLUICE_HAVE_CUDA}")
