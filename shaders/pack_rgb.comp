#version 430
// Pack stage for encoders that take RGB: the rendered RGBA texture (rows bottom-up)
// becomes packed RGB with rows top-down.
// CHANNELS 3: nvJPEG's interleaved RGB, 3 bytes per pixel, in an image whose texels
// hold PACK consecutive bytes of a row (rgba8 for 4, rg8 for 2, r8 for 1; the host
// picks the most that divide the row's 3 * width bytes). One invocation makes PACK
// pixels, i.e. exactly three whole texels, so every store writes a full texel.
// CHANNELS 4: an rgba8 image (NVENC's ABGR, whose lowest byte is R), alpha forced opaque, or with
// KEEP_ALPHA 1 the source's alpha (PNG with alpha).
layout(local_size_x = 8, local_size_y = 8) in;

layout(binding = 0) uniform sampler2D src;
#if CHANNELS == 3 && PACK == 4
layout(rgba8, binding = 0) writeonly uniform image2D dst;
#elif CHANNELS == 3 && PACK == 2
layout(rg8, binding = 0) writeonly uniform image2D dst;
#elif CHANNELS == 3
layout(r8, binding = 0) writeonly uniform image2D dst;
#else
layout(rgba8, binding = 0) writeonly uniform image2D dst;
#endif

uniform ivec2 size;

vec3 fetch(int x, int y) { return texelFetch(src, ivec2(x, size.y - 1 - y), 0).rgb; }

void main() {
    ivec2 g = ivec2(gl_GlobalInvocationID.xy);
#if CHANNELS == 3
    int x0 = g.x * PACK;
    if (x0 >= size.x || g.y >= size.y) return;
    float bytes[3 * PACK];
    for (int i = 0; i < PACK; i++) {
        vec3 rgb = fetch(x0 + i, g.y);
        bytes[3 * i] = rgb.r;
        bytes[3 * i + 1] = rgb.g;
        bytes[3 * i + 2] = rgb.b;
    }
    for (int t = 0; t < 3; t++) {
        vec4 texel = vec4(0.0);
        for (int k = 0; k < PACK; k++) texel[k] = bytes[t * PACK + k];
        imageStore(dst, ivec2(3 * g.x + t, g.y), texel);
    }
#else
    if (g.x >= size.x || g.y >= size.y) return;
#if KEEP_ALPHA
    imageStore(dst, g, texelFetch(src, ivec2(g.x, size.y - 1 - g.y), 0));
#else
    imageStore(dst, g, vec4(fetch(g.x, g.y), 1.0));
#endif
#endif
}
