# Writes OUTPUT from TEMPLATE with the current git commit, at every build (not only at
# configure time), so `info` and the reports name the commit the binary was built from.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE RV_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE result)
if(NOT result EQUAL 0 OR RV_GIT_COMMIT STREQUAL "")
  set(RV_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" diff --quiet HEAD -- . ":(exclude)golden/boxes"
                  RESULT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    set(RV_GIT_COMMIT "${RV_GIT_COMMIT}-dirty")
  endif()
endif()
configure_file("${TEMPLATE}" "${OUTPUT}.tmp" @ONLY)
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
