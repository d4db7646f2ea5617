#version 330 core
// Draws a texture over the whole viewport (a decoded video frame into the render target).
in vec2 uv;
out vec4 colour;
uniform sampler2D image;
void main() {
    colour = texture(image, uv);
}
