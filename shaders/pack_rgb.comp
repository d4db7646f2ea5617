#version 430
// Pack stage for encoders that take RGB: the rendered RGBA texture (rows bottom-up)
// becomes packed RGB with rows top-down. CHANNELS 3: an r8 image 3x as wide holding
// R,G,B bytes per pixel (nvJPEG's interleaved RGB). CHANNELS 4: an rgba8 image
// (NVENC's ABGR, whose lowest byte is R), alpha forced opaque.
layout(local_size_x = 8, local_size_y = 8) in;

layout(binding = 0) uniform sampler2D src;
#if CHANNELS == 3
layout(r8, binding = 0) writeonly uniform image2D dst;
#else
layout(rgba8, binding = 0) writeonly uniform image2D dst;
#endif

uniform ivec2 size;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size.x || p.y >= size.y) return;
    vec3 rgb = texelFetch(src, ivec2(p.x, size.y - 1 - p.y), 0).rgb;
#if CHANNELS == 3
    imageStore(dst, ivec2(3 * p.x + 0, p.y), vec4(rgb.r));
    imageStore(dst, ivec2(3 * p.x + 1, p.y), vec4(rgb.g));
    imageStore(dst, ivec2(3 * p.x + 2, p.y), vec4(rgb.b));
#else
    imageStore(dst, p, vec4(rgb, 1.0));
#endif
}
