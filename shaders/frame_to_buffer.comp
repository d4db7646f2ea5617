#version 430
// Processing stage, GL -> process function: the RGBA8 render target (rows bottom-up,
// GL's convention) becomes an H x W x 4 uint8 array with rows top-down, one 32-bit
// word per pixel with R in the lowest byte: what numpy, torch and CuPy see. The
// buffer is GL memory on the host path and CUDA memory on the CUDA path.
layout(local_size_x = 16, local_size_y = 16) in;

layout(binding = 0) uniform sampler2D src;
layout(std430, binding = 0) writeonly buffer Frame { uint words[]; };

uniform ivec2 size;

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size.x || p.y >= size.y) return;
    // packUnorm4x8 rounds x * 255, so 8-bit texels come back exactly.
    words[p.y * size.x + p.x] = packUnorm4x8(texelFetch(src, ivec2(p.x, size.y - 1 - p.y), 0));
}
