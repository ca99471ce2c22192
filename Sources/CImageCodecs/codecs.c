// See include/ShrinkwrapImageCodecs.h.
#include "ShrinkwrapImageCodecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__) && __has_include(<png.h>) && __has_include(<jpeglib.h>)
#define SW_HAVE_CODECS 1
#include <png.h>
#include <jpeglib.h>
#include <jerror.h>
#else
#define SW_HAVE_CODECS 0
#endif

void sw_image_free(sw_image *image) {
    if (image == NULL) return;
    free(image->pixels);
    image->pixels = NULL;
}

static void sw_set_message(sw_image *out, const char *text) {
    snprintf(out->message, sizeof out->message, "%s", text);
}

/// width × height ≤ max_pixels and width × height × 3 fits a size_t.
static int sw_size_ok(size_t width, size_t height, size_t max_pixels) {
    if (width == 0 || height == 0) return 0;
    if (width > max_pixels / height) return 0;
    return (width * height) <= ((size_t)-1) / 4;
}

#if SW_HAVE_CODECS

int sw_image_codecs_available(void) { return 1; }

// ---------------------------------------------------------------- PNG

typedef struct {
    const unsigned char *data;
    size_t size;
    size_t offset;
    sw_image *out;
    unsigned char *pixels;
    png_bytep *rows;
} sw_png_context;

static void sw_png_error(png_structp png, png_const_charp message) {
    sw_png_context *ctx = (sw_png_context *)png_get_error_ptr(png);
    sw_set_message(ctx->out, message ? message : "libpng error");
    png_longjmp(png, 1);
}

static void sw_png_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

static void sw_png_read(png_structp png, png_bytep buffer, size_t length) {
    sw_png_context *ctx = (sw_png_context *)png_get_io_ptr(png);
    if (length > ctx->size - ctx->offset) {
        char text[96];
        snprintf(text, sizeof text, "the file ends at byte %zu inside the image data", ctx->size);
        sw_png_error(png, text);
        return;
    }
    memcpy(buffer, ctx->data + ctx->offset, length);
    ctx->offset += length;
}

int sw_decode_png(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out) {
    memset(out, 0, sizeof *out);
    if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
        sw_set_message(out, "not a PNG file (bad signature)");
        return 1;
    }
    sw_png_context ctx = { data, size, 8, out, NULL, NULL };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, sw_png_error, sw_png_warning);
    if (png == NULL) { sw_set_message(out, "libpng could not start"); return 1; }
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        sw_set_message(out, "libpng could not start");
        return 1;
    }
    sw_png_context *volatile pctx = &ctx;
    if (setjmp(png_jmpbuf(png))) {
        free(pctx->rows);
        free(pctx->pixels);
        png_destroy_read_struct(&png, &info, NULL);
        if (out->message[0] == 0) sw_set_message(out, "libpng error");
        return 1;
    }
    png_set_read_fn(png, &ctx, sw_png_read);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, 1u << 20, 1u << 20);
    png_set_chunk_malloc_max(png, 64u << 20);
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    if (!sw_size_ok(width, height, max_pixels)) {
        snprintf(out->message, sizeof out->message, "%ux%u pixels is more than the %zu-pixel limit", (unsigned)width,
                 (unsigned)height, max_pixels);
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    if (depth == 16) png_set_strip_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    // Palette tRNS becomes alpha when the palette expands; drop it with real alpha.
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((channels != 1 && channels != 3) || rowbytes != (size_t)width * (size_t)channels) {
        snprintf(out->message, sizeof out->message, "unexpected PNG layout after conversion (%d channels, %zu bytes per row)",
                 channels, rowbytes);
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    ctx.pixels = malloc(rowbytes * height);
    ctx.rows = malloc(sizeof(png_bytep) * height);
    if (ctx.pixels == NULL || ctx.rows == NULL) {
        free(ctx.pixels);
        free(ctx.rows);
        png_destroy_read_struct(&png, &info, NULL);
        sw_set_message(out, "out of memory");
        return 1;
    }
    for (png_uint_32 y = 0; y < height; y++) ctx.rows[y] = ctx.pixels + (size_t)y * rowbytes;
    png_read_image(png, ctx.rows);
    png_read_end(png, NULL);  // a file cut before IEND is an error, as a cut JPEG is
    free(ctx.rows);
    ctx.rows = NULL;
    png_destroy_read_struct(&png, &info, NULL);
    out->width = (int)width;
    out->height = (int)height;
    out->channels = channels;
    out->pixels = ctx.pixels;
    return 0;
}

// ---------------------------------------------------------------- JPEG

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    sw_image *out;
} sw_jpeg_error;

static void sw_jpeg_fail(j_common_ptr cinfo) {
    sw_jpeg_error *err = (sw_jpeg_error *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, text);
    sw_set_message(err->out, text);
    longjmp(err->jump, 1);
}

static void sw_jpeg_message(j_common_ptr cinfo, int level) {
    // A truncated file is an error (libjpeg would pad it with gray and call
    // it a warning); other warnings (extraneous bytes, …) are ignored, as PIL does.
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) sw_jpeg_fail(cinfo);
}

int sw_decode_jpeg(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out) {
    memset(out, 0, sizeof *out);
    if (size < 3 || data[0] != 0xFF || data[1] != 0xD8) {
        sw_set_message(out, "not a JPEG file (no start-of-image marker)");
        return 1;
    }
    struct jpeg_decompress_struct cinfo;
    sw_jpeg_error err;
    unsigned char *volatile pixels = NULL;
    cinfo.err = jpeg_std_error(&err.base);
    err.base.error_exit = sw_jpeg_fail;
    err.base.emit_message = sw_jpeg_message;
    err.out = out;
    if (setjmp(err.jump)) {
        free(pixels);
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = 1024L * 1024L * 1024L;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if (!sw_size_ok(cinfo.image_width, cinfo.image_height, max_pixels)) {
        snprintf(out->message, sizeof out->message, "%ux%u pixels is more than the %zu-pixel limit",
                 (unsigned)cinfo.image_width, (unsigned)cinfo.image_height, max_pixels);
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    if (cinfo.num_components == 1) {
        cinfo.out_color_space = JCS_GRAYSCALE;
    } else if (cinfo.num_components == 3) {
        cinfo.out_color_space = JCS_RGB;
    } else {
        snprintf(out->message, sizeof out->message, "%d-component (CMYK / YCCK) JPEGs are not supported",
                 cinfo.num_components);
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    jpeg_start_decompress(&cinfo);
    int channels = cinfo.output_components;
    size_t width = cinfo.output_width, height = cinfo.output_height;
    if ((channels != 1 && channels != 3) || !sw_size_ok(width, height, max_pixels)) {
        sw_set_message(out, "unexpected JPEG output layout");
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    size_t rowbytes = width * (size_t)channels;
    pixels = malloc(rowbytes * height);
    if (pixels == NULL) {
        sw_set_message(out, "out of memory");
        jpeg_destroy_decompress(&cinfo);
        return 1;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + (size_t)cinfo.output_scanline * rowbytes;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
            sw_set_message(out, "libjpeg stopped before the last row");
            free(pixels);
            jpeg_destroy_decompress(&cinfo);
            return 1;
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    out->width = (int)width;
    out->height = (int)height;
    out->channels = channels;
    out->pixels = pixels;
    return 0;
}

#else

int sw_image_codecs_available(void) { return 0; }

int sw_decode_png(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out) {
    (void)data; (void)size; (void)max_pixels;
    memset(out, 0, sizeof *out);
    sw_set_message(out, "this build has no PNG decoder (libpng-dev was missing at build time; run `make deps`)");
    return 1;
}

int sw_decode_jpeg(const unsigned char *data, size_t size, size_t max_pixels, sw_image *out) {
    (void)data; (void)size; (void)max_pixels;
    memset(out, 0, sizeof *out);
    sw_set_message(out, "this build has no JPEG decoder (libjpeg-dev was missing at build time; run `make deps`)");
    return 1;
}

#endif
