# Sanitizer flags for the whole build (presets `asan` and `tsan`).
if(BBMM_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(BBMM_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT BBMM_SANITIZER STREQUAL "")
  message(FATAL_ERROR "BBMM_SANITIZER='${BBMM_SANITIZER}': use '', 'address' or 'thread'")
endif()
