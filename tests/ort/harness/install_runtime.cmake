# Installs ONNX Runtime's Linux library from the onnxruntime-node npm package into DEST
# (cmake -DDEST=dir -DVERSION=x.y.z -DLIBRARY=path -DREASON_FILE=path -P install_runtime.cmake).
# --ignore-scripts: the package's postinstall would download CUDA binaries; we need only the
# libonnxruntime.so.1 the package itself carries. When it cannot be installed (no npm, no
# registry), writes why to REASON_FILE and succeeds, so the ort tests skip with that reason.
if(EXISTS "${LIBRARY}")
  file(REMOVE "${REASON_FILE}")
  return()
endif()
find_program(NPM npm)
if(NOT NPM)
  file(WRITE "${REASON_FILE}" "npm is not installed (Debian package npm), so onnxruntime-node@${VERSION} could not be installed")
  message(STATUS "ort runtime: npm not found; the ort tests will skip")
  return()
endif()
file(MAKE_DIRECTORY "${DEST}")
execute_process(
  COMMAND "${NPM}" install --ignore-scripts --no-audit --no-fund --no-save --loglevel=error
          --prefix "${DEST}" "onnxruntime-node@${VERSION}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output TIMEOUT 600)
if(NOT result EQUAL 0 OR NOT EXISTS "${LIBRARY}")
  string(LENGTH "${output}" length)
  if(length GREATER 600)
    math(EXPR start "${length} - 600")
    string(SUBSTRING "${output}" ${start} 600 output)
  endif()
  file(WRITE "${REASON_FILE}" "npm install onnxruntime-node@${VERSION} failed (${result}): ${output}")
  message(STATUS "ort runtime: npm install failed (${result}); the ort tests will skip")
  return()
endif()
file(REMOVE "${REASON_FILE}")
message(STATUS "ort runtime: ${LIBRARY}")
