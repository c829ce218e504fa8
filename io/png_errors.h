#pragma once
// Private to io/: libpng's error callbacks, shared by the PNG reader
// (image_reader.cpp) and writer (image_writer.cpp). libpng reports an error
// through png_error_cb, which keeps the first message in the state given to
// png_create_*_struct as its error pointer and longjmps back to the png_c_*
// function that called libpng; warnings are ignored.
#include <png.h>

#include <cstdio>

namespace stripeline::io {

// What an error leaves for the caller; a reader's or writer's state derives
// from it and is given to png_create_*_struct as a PngErrorState*.
struct PngErrorState {
  char message[256] = {};
};

inline void png_error_cb(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
  if (state != nullptr && state->message[0] == '\0') std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

inline void png_warning_cb(png_structp, png_const_charp) {}

}  // namespace stripeline::io
