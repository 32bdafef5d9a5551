# MEMARENA_SANITIZE=address,undefined | thread: instrument every target of the build.
if(MEMARENA_SANITIZE)
  if(MEMARENA_SANITIZE MATCHES "thread" AND MEMARENA_SANITIZE MATCHES "address")
    message(FATAL_ERROR "MEMARENA_SANITIZE: thread cannot be combined with address; "
                        "use address,undefined or thread")
  endif()
  if(NOT MEMARENA_SANITIZE MATCHES "^(address|undefined|thread)(,(address|undefined|thread))*$")
    message(FATAL_ERROR "MEMARENA_SANITIZE='${MEMARENA_SANITIZE}': allowed values are "
                        "address,undefined | address | undefined | thread")
  endif()
  add_compile_options(-fsanitize=${MEMARENA_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${MEMARENA_SANITIZE})
  add_compile_definitions(MEMARENA_SANITIZED=1)
endif()
