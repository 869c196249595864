# sluice_unity_build(DIR...): compile the production libraries under DIR in unity batches
# (CMake's UNITY_BUILD: several .cc files per compiler run), when SLUICE_UNITY_BUILD is on.
#
# Why: most of a production file's compile time is parsing the same heavy headers (protobuf's
# generated code, nlohmann/json, oneTBB); a batch parses them once. scripts/test turns it on
# for both of its trees (scripts/configure-asan for the sanitizer one): their production compile
# was the largest block of a clean CI run. A tree configured by hand keeps one compiler run per
# file, so a developer's build still checks that every file includes what it uses.
# protobuf's generated files define the same file-local names, so proto/ is never batched. In
# our own files, two helpers of one name in two files' anonymous namespaces collide when the
# files share a batch: name file-local helpers for what they serve (queue_delivery_trampoline,
# not delivery_trampoline), and put a helper two files share in a header instead.
# Files with their own compile flags (the kernels' per-ISA files) are left out of the batches
# by CMake itself.
option(SLUICE_UNITY_BUILD "Compile production libraries in unity batches (faster, coarser rebuilds)" OFF)
set(SLUICE_UNITY_BATCH_SIZE 8 CACHE STRING "Files per unity batch (SLUICE_UNITY_BUILD)")

function(_sluice_unity_dir dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON
        UNITY_BUILD_BATCH_SIZE ${SLUICE_UNITY_BATCH_SIZE})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    _sluice_unity_dir("${subdir}")
  endforeach()
endfunction()

function(sluice_unity_build)
  if(NOT SLUICE_UNITY_BUILD)
    return()
  endif()
  foreach(dir ${ARGN})
    _sluice_unity_dir("${CMAKE_CURRENT_SOURCE_DIR}/${dir}")
  endforeach()
endfunction()
