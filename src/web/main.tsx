/** Entry point of the web console: mounts the app in #app. */
import { render } from 'preact'
import { App } from './app'
import './styles.css'

render(<App />, document.getElementById('app')!)
