# install.cmake - what an installed tree needs beyond the library, header and
# tool (included by the root CMakeLists.txt):
#   - relocatable data: the tool and the library find PREFIX/share/mla-tune
#     relative to where they are at run time (db/transfer.c, tuner/config.c),
#     so an installed tree still works after it is moved; the configured
#     prefix is only the last fallback;
#   - the shipped tuning databases, merged into the system DB
#     (PREFIX/share/mla-tune/tuning.db) with their provenance;
#   - a man page and bash completion.

# `cmake --install` installs libmlatune.so: building the tool (the main job
# builds only that target) builds the library too, so install never finds
# it missing
add_dependencies(mla-tune mlatune)

# PREFIX/share as seen from PREFIX/bin and PREFIX/lib (lib/x86_64-linux-gnu
# under /usr is one level deeper)
file(RELATIVE_PATH MT_BINDIR_TO_DATADIR ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR})
file(RELATIVE_PATH MT_LIBDIR_TO_DATADIR ${CMAKE_INSTALL_FULL_LIBDIR} ${CMAKE_INSTALL_FULL_DATADIR})
target_compile_definitions(mlatune_objects PRIVATE
  MT_BINDIR_TO_DATADIR="${MT_BINDIR_TO_DATADIR}" MT_LIBDIR_TO_DATADIR="${MT_LIBDIR_TO_DATADIR}")
target_compile_definitions(mlatune_tuner PRIVATE MT_BINDIR_TO_DATADIR="${MT_BINDIR_TO_DATADIR}")

# The system DB: every shipped database (one per measured architecture and
# campaign; docs/shipped-databases.md says where each came from) merged into
# one file at install time by the tool that is being installed, so the file
# is written by the same schema version the runtime reads.  `merge` writes a
# rollback-journal file, readable from a folder the user cannot write.
set(MT_SHIPPED_DBS
  ${CMAKE_SOURCE_DIR}/reports/h100/fast-decode/tuning.db
  ${CMAKE_SOURCE_DIR}/reports/h100/ragged/tuning.db
  ${CMAKE_SOURCE_DIR}/reports/h100/broad/tuning.db
  ${CMAKE_SOURCE_DIR}/reports/h100/crossover/tuning.db
  ${CMAKE_SOURCE_DIR}/reports/h100/prefill/tuning.db)
install(CODE "
  set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/mla-tune\")
  file(MAKE_DIRECTORY \"\${dest}\")
  file(REMOVE \"\${dest}/tuning.db\" \"\${dest}/tuning.db-wal\" \"\${dest}/tuning.db-shm\")
  message(STATUS \"Installing: \${dest}/tuning.db (merged: ${MT_SHIPPED_DBS})\")
  execute_process(COMMAND \"$<TARGET_FILE:mla-tune>\" merge ${MT_SHIPPED_DBS} -o \"\${dest}/tuning.db\"
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR \"merging the shipped databases into \${dest}/tuning.db failed (\${rc})\")
  endif()
")
install(FILES docs/shipped-databases.md DESTINATION ${CMAKE_INSTALL_DATADIR}/mla-tune RENAME PROVENANCE.md)

install(FILES docs/mla-tune.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES tuner/completion/mla-tune.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME mla-tune)

# what `mla-tune --version` prints: the project's version
target_compile_definitions(mla-tune PRIVATE MT_VERSION="${PROJECT_VERSION}")
