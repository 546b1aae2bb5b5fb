import '@shopify/polaris/build/esm/styles.css';
import './app.css';
import { AppProvider } from '@shopify/polaris';
import en from '@shopify/polaris/locales/en.json';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { RouterLink } from './router';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <AppProvider i18n={en} linkComponent={RouterLink}>
      <App />
    </AppProvider>
  </StrictMode>,
);
