#version 430
// Processing stage, process function -> GL: the H x W x 4 uint8 array (rows top-down)
// the function left or returned becomes an RGBA8 texture with rows bottom-up again,
// which the overlay draws on and the convert stage reads like any render target.
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer Frame { uint words[]; };
layout(rgba8, binding = 0) writeonly uniform image2D dst;

uniform ivec2 size;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size.x || p.y >= size.y) return;
    imageStore(dst, ivec2(p.x, size.y - 1 - p.y), unpackUnorm4x8(words[p.y * size.x + p.x]));
}
