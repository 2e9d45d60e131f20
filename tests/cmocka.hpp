/* CMocka for C++ tests.  Debian 12's cmocka 1.1.5 does not wrap its header in
 * extern "C", and needs the standard headers included first. */
#ifndef STARPU_FUSING_TESTS_CMOCKA_HPP
#define STARPU_FUSING_TESTS_CMOCKA_HPP

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>

extern "C" {
#include <cmocka.h>
}

#endif
