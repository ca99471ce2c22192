// Shrinkwrap's bridge to libpng and libjpeg (Linux). Both libraries report
// errors by longjmp, which Swift cannot catch; these functions catch them
// here and return an error message instead, so a corrupt or hostile image
// is an error, never a crash.
#ifndef SHRINKWRAP_IMAGE_CODECS_H
#define SHRINKWRAP_IMAGE_CODECS_H

#include <stddef.h>

/// A decoded 8-bit image: rows top to bottom, channels interleaved.
typedef struct {
    /// Width and height in pixels.
    int width;
    int height;
    /// 1 (gray) or 3 (RGB). Alpha is dropped, not composited.
    int channels;
    /// width × height × channels bytes, malloc'ed; free with sw_image_free.
    unsigned char *pixels;
    /// Why decoding failed (NUL-terminated), when a function returns non-zero.
    char message[256];
} sw_image;

/// Decodes a PNG held in memory. Gray and gray+alpha files give 1 channel,
/// every other colour type 3 (palette expanded, alpha and tRNS dropped);
/// 16-bit samples keep their high byte and 1/2/4-bit samples are scaled to
/// 8 bits, as PIL reads them. No gamma or colour-profile transform is
/// applied. Images of more than `max_pixels` pixels are refused before any
/// pixel memory is allocated. Returns 0 on success.
int sw_decode_png(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out);

/// Decodes a baseline or progressive JPEG held in memory with libjpeg's
/// default (islow) DCT and fancy upsampling, as PIL does. Grayscale files
/// give 1 channel, YCbCr / RGB files 3; CMYK is refused. A file that ends
/// early is an error. Returns 0 on success.
int sw_decode_jpeg(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out);

/// Frees `pixels` (safe to call twice).
void sw_image_free(sw_image *image);

/// 1 when the codecs were compiled in (headers found at build time).
int sw_image_codecs_available(void);

#endif
