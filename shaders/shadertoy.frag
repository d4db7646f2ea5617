#version 330 core
// Wrapper that runs a Shadertoy-style mainImage(out vec4, in vec2).
uniform vec3 iResolution;
uniform float iTime;
uniform float iTimeDelta;
uniform int iFrame;
uniform vec4 iMouse;
out vec4 glrec_colour;
#line 1
//__USER_SOURCE__
void main() {
    vec4 c = vec4(0.0, 0.0, 0.0, 1.0);
    mainImage(c, gl_FragCoord.xy);
    glrec_colour = vec4(c.rgb, 1.0);
}
