# maprect_add_program(<name> SOURCES <file>... [LIBRARIES <target>...])
#
# Builds the executable <name> from a user's model sources: their MAPRECT_REGISTER_MODEL models get the
# commands `sample`, `fit`, `summary` and `plan` of the maprect program (docs/models.md), e.g.
#   maprect_add_program(my_sampler SOURCES my_model.cpp)
#   mpirun -np 8 my_sampler sample --model my_model --data my.json --chains 4
# The sources are compiled into the executable itself, so that their static registrations (models and
# map_rect call sites) are always linked. LIBRARIES are linked too (PRIVATE).
function(maprect_add_program name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "maprect_add_program(${name}): SOURCES names no file (the model sources are needed)")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "maprect_add_program(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE maprect::program_main maprect::program ${arg_LIBRARIES})
  target_compile_features(${name} PRIVATE cxx_std_17)
endfunction()
