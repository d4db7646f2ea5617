#version 330 core
in vec3 tint;
in vec2 corner;
out vec4 colour;
void main() {
    float d = dot(corner, corner);
    if (d > 1.0) discard;
    colour = vec4(tint * (1.0 - d), 1.0);
}
