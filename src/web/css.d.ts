/** Stylesheets are imported for their effect; esbuild bundles them into the entry's CSS file. */
declare module '*.css'
