# Shared compile settings and the helpers every folder uses to declare its targets the same way.

set(WW_WARNINGS -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wformat=2)
if(WIREWISE_WERROR)
  list(APPEND WW_WARNINGS -Werror)
endif()

if(WIREWISE_SANITIZE)
  add_compile_options(-fsanitize=${WIREWISE_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${WIREWISE_SANITIZE})
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

# ww_test(NAME SRCS ... DEPS ... LABELS ...): one GoogleTest binary, registered with CTest test by test.
function(ww_test NAME)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${NAME} ${ARG_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${NAME} PRIVATE ${WW_WARNINGS})
  target_link_libraries(${NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${NAME} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()
