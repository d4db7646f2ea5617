#version 330
in vec2 v_local;
in vec4 v_colour;
out vec4 out_colour;

void main() {
    if (dot(v_local, v_local) > 1.0) discard;  // round points: the corners of their quad
    out_colour = v_colour;
}
