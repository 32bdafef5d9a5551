# memarena_warnings(target): the project's warning bar, -Wall -Wextra -Werror, on g++ and clang.
function(memarena_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Werror>)
endfunction()
