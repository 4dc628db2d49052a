# Shared compile settings and the helpers every folder uses to declare its targets the same way.

set(WW_WARNINGS -Wall -Wextra -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor> -Wformat=2)
if(WIREWISE_WERROR)
  list(APPEND WW_WARNINGS -Werror)
endif()
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # A unity build #includes each .cc, and GCC then reads a class that holds a type from its file's anonymous
  # namespace (an Impl's slot arrays) as a header's class that other files could see (-Wsubobject-linkage).
  # Every such class is defined in that same .cc, so the warning says nothing here.
  list(APPEND WW_WARNINGS -Wno-subobject-linkage)
endif()

if(WIREWISE_SANITIZE)
  set(WW_SANITIZE_FLAGS -fsanitize=${WIREWISE_SANITIZE})
  if(WIREWISE_SANITIZE MATCHES "undefined")
    # UBSan's default is to print and carry on, so a test with undefined behaviour would still pass: make
    # every finding end the process (CI's ASan + UBSan stage relies on this).
    list(APPEND WW_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${WW_SANITIZE_FLAGS} -fno-omit-frame-pointer)
  if(WIREWISE_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns that TSan does not model std::atomic_thread_fence, which Boost.Asio uses; the fences
    # there order nothing we rely on, so keep -Werror builds possible under TSan.
    list(APPEND WW_WARNINGS -Wno-tsan)
  endif()
  add_link_options(${WW_SANITIZE_FLAGS})
endif()

# ww_library(NAME SRCS ... DEPS ...): a static, position-independent internal library whose objects go
# into the shipped plugin; tests and benchmarks link the same objects.
function(ww_library NAME)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${NAME} STATIC ${ARG_SRCS})
  target_include_directories(${NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${NAME} PRIVATE ${WW_WARNINGS})
  target_link_libraries(${NAME} PUBLIC ${ARG_DEPS})
endfunction()

# ww_test(NAME SRCS ... DEPS ... LABELS ... [RUN_SERIAL]): one GoogleTest binary, registered with CTest
# test by test. RUN_SERIAL keeps CTest from running anything beside it (multi-process tests whose timing
# assumptions do not survive sharing two cores with other multi-process tests).
function(ww_test NAME)
  cmake_parse_arguments(ARG "RUN_SERIAL" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${NAME} ${ARG_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${NAME} PRIVATE ${WW_WARNINGS})
  target_link_libraries(${NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main Threads::Threads)
  set(serial FALSE)
  if(ARG_RUN_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${NAME} PROPERTIES LABELS "${ARG_LABELS}" RUN_SERIAL ${serial} DISCOVERY_TIMEOUT 60)
  ww_label_targets("${ARG_LABELS}" ${NAME})
endfunction()

# ww_label_targets(LABELS TARGET...): TARGETs are needed by the tests of these labels. tests/CMakeLists.txt
# turns each label into a target ww_tests_<label> that builds them, so `cmake --build B --target
# ww_tests_unit` builds what `ctest -L unit` runs and no more (CI's sanitizer stage builds only that).
function(ww_label_targets LABELS)
  foreach(label IN LISTS LABELS)
    set_property(GLOBAL APPEND PROPERTY WW_LABELS ${label})
    set_property(GLOBAL APPEND PROPERTY WW_LABEL_TARGETS_${label} ${ARGN})
  endforeach()
endfunction()

# A libFuzzer target (clang only, never a ctest; CI runs each for 60 s, see .ci/run; by hand: ./NAME
# -max_total_time=60 NEW_DIR tests/<area>/fuzz_corpus/NAME). SRCS are compiled into it again, instrumented
# for coverage and the sanitizers (the project's libraries are not instrumented for coverage, and carry the
# sanitizers only in a WIREWISE_SANITIZE build). UBSan findings end the run like ASan's. Elsewhere it is
# silently not built.
function(ww_fuzz NAME)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    return()
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles("
    #include <cstddef>
    #include <cstdint>
    extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }" WW_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT WW_HAVE_LIBFUZZER)
    return()
  endif()
  add_executable(${NAME} ${ARG_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${NAME} PRIVATE ${WW_WARNINGS} -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=undefined)
  target_link_options(${NAME} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_libraries(${NAME} PRIVATE ${ARG_DEPS})
endfunction()
