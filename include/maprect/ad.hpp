#pragma once
/// \file The reverse-mode AD core of maprect.

#include "ad/arena.hpp"
#include "ad/eigen.hpp"
#include "ad/functions.hpp"
#include "ad/functor.hpp"
#include "ad/grad.hpp"
#include "ad/log_sum_exp.hpp"
#include "ad/nested_tape.hpp"
#include "ad/operators.hpp"
#include "ad/precomputed_gradients.hpp"
#include "ad/tape.hpp"
#include "ad/var.hpp"
