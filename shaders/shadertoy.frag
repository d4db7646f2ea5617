#version 430 core
// Wrapper that runs a Shadertoy pass: the uniforms Shadertoy declares, the legacy
// spellings older shaders use, then Common, the pass's code and a main() calling mainImage.
// GLSL 4.30 accepts what Shadertoy's WebGL2 (GLSL ES 3.00) accepts, bit-packing built-ins included.
#define HW_PERFORMANCE 1
uniform vec3 iResolution;            // viewport resolution in pixels (z = 1)
uniform float iTime;                 // seconds
uniform float iTimeDelta;            // seconds since the previous frame
uniform float iFrameRate;            // frames per second
uniform int iFrame;                  // frames rendered before this one
uniform float iChannelTime[4];       // playback time of each channel's video, seconds
uniform vec3 iChannelResolution[4];  // each channel's size in pixels (z = 1)
uniform vec4 iMouse;                 // xy: pointer while the button is down; zw: click (signs as on Shadertoy)
uniform vec4 iDate;                  // year, month (0-11), day (1-31), seconds since midnight
uniform float iSampleRate;           // sound sample rate (44100)
uniform sampler2D iChannel0;
uniform sampler2D iChannel1;
uniform sampler2D iChannel2;
uniform sampler2D iChannel3;
out vec4 glrec_colour;
// Spellings from before Shadertoy moved to WebGL2.
#define iGlobalTime iTime
#define texture2D texture
#define texture2DLod textureLod
#define texture2DLodEXT textureLod
#define texture2DGradEXT textureGrad
#define textureCube texture
#define gl_FragColor glrec_colour
#line 1 2
//__COMMON__
#line 1 1
//__USER__
//__MAIN__
