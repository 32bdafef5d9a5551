// fmt's compiled part, once for the whole library. The library carries its own fmt rather
// than linking libfmt.so, so that libmemarena_malloc.so loads nothing but libc (docs/
// dropin.md, "Start-up footprint"). Header-only mode did that by compiling format-inl.h into
// every object that formats (about 4 s of each one's 5 s build, in 50 objects); here the
// objects see only fmt's declarations and this one defines what they call, as fmt's own
// src/format.cc does for libfmt. Hidden (CMakeLists.txt): a shared library built from
// libmemarena exports none of it, so it never stands in for a program's own fmt.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// Declared in format.h, defined in format-inl.h: floating-point output.
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

// format.h's extern templates, for both character types it declares them for. With
// FMT_STATIC_THOUSANDS_SEPARATOR (every object of the library) they read no std::locale.
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;

template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
